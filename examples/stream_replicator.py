"""Change data capture: keep a second table in sync by following the first one's stream.

The consumer follows every shard of the stream with boto3's `dynamodbstreams` client and reads
a child shard only after its parent is read to the end (shard lineage), which is what keeps
the records of each item in order across partition splits. The source table is split from 2
to 4 partitions halfway through, so the stream has closed parents and open children.
Run: .venv/bin/python examples/stream_replicator.py   (or set DDB_ENDPOINT to use a running server)
"""
from __future__ import annotations

import os
import random

import boto3

from _local import client, endpoint


class Replicator:
    """Applies a stream's records to a target table: NewImage for INSERT/MODIFY, Keys for REMOVE."""

    def __init__(self, streams, ddb, stream_arn: str, target: str) -> None:
        self.streams, self.ddb, self.arn, self.target = streams, ddb, stream_arn, target
        self.iterators: dict[str, str] = {}  # open readers by shard id
        self.finished: set[str] = set()  # shards read to their end
        self.applied = 0

    def _shards(self) -> list[dict]:
        shards, start = [], None
        while True:
            page = self.streams.describe_stream(StreamArn=self.arn, **(
                {"ExclusiveStartShardId": start} if start else {}))["StreamDescription"]
            shards += page["Shards"]
            start = page.get("LastEvaluatedShardId")
            if not start:
                return shards

    def _start_ready_shards(self) -> None:
        shards = self._shards()
        known = {s["ShardId"] for s in shards}
        for shard in shards:
            shard_id, parent = shard["ShardId"], shard.get("ParentShardId")
            if shard_id in self.finished or shard_id in self.iterators:
                continue
            if parent in known and parent not in self.finished:
                continue  # lineage: the parent's records come first
            self.iterators[shard_id] = self.streams.get_shard_iterator(
                StreamArn=self.arn, ShardId=shard_id, ShardIteratorType="TRIM_HORIZON")["ShardIterator"]

    def _apply(self, record: dict) -> None:
        data = record["dynamodb"]
        if record["eventName"] == "REMOVE":
            self.ddb.delete_item(TableName=self.target, Key=data["Keys"])
        else:
            self.ddb.put_item(TableName=self.target, Item=data["NewImage"])
        self.applied += 1

    def catch_up(self) -> None:
        """Read every shard until no reader gets new records (closed shards until their end)."""
        while True:
            self._start_ready_shards()
            progressed = False
            for shard_id, iterator in list(self.iterators.items()):
                page = self.streams.get_records(ShardIterator=iterator, Limit=100)
                for record in page["Records"]:
                    self._apply(record)
                progressed = progressed or bool(page["Records"])
                following = page.get("NextShardIterator")
                if following is None:  # a closed shard, fully read: its children may start
                    del self.iterators[shard_id]
                    self.finished.add(shard_id)
                    progressed = True
                else:
                    self.iterators[shard_id] = following
            if not progressed:
                return


def scan(ddb, table: str) -> dict:
    items, start = {}, None
    while True:
        page = ddb.scan(TableName=table, **({"ExclusiveStartKey": start} if start else {}))
        items.update({item["id"]["S"]: item for item in page["Items"]})
        start = page.get("LastEvaluatedKey")
        if not start:
            return items


def main() -> None:
    url = os.environ.get("DDB_ENDPOINT") or endpoint()
    ddb = client(url)
    streams = boto3.client("dynamodbstreams", endpoint_url=url, region_name="us-east-1",
                           aws_access_key_id="x", aws_secret_access_key="x")
    schema = {"KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}],
              "AttributeDefinitions": [{"AttributeName": "id", "AttributeType": "S"}],
              # provisioned, 1 partition by the classic rule; the tag then sets the partition count
              "ProvisionedThroughput": {"ReadCapacityUnits": 200, "WriteCapacityUnits": 200}}
    source = ddb.create_table(TableName="orders", **schema,
                              StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
                              Tags=[{"Key": "dynalocal:partitions", "Value": "2"}])["TableDescription"]
    ddb.create_table(TableName="orders-replica", **schema)
    replicator = Replicator(streams, ddb, source["LatestStreamArn"], "orders-replica")
    rng = random.Random(1)

    def churn(rounds: int) -> None:
        for _ in range(rounds):
            key = {"id": {"S": f"order-{rng.randrange(50)}"}}
            if rng.random() < 0.2:
                ddb.delete_item(TableName="orders", Key=key)
            else:
                ddb.put_item(TableName="orders", Item={**key, "status": {"S": rng.choice(["new", "paid", "sent"])},
                                                       "total": {"N": str(rng.randrange(1, 500))}})

    churn(300)
    replicator.catch_up()
    ddb.tag_resource(ResourceArn=source["TableArn"], Tags=[{"Key": "dynalocal:partitions", "Value": "4"}])
    churn(300)  # these records go to the child shards
    replicator.catch_up()
    shards = replicator._shards()
    closed = sum("EndingSequenceNumber" in s["SequenceNumberRange"] for s in shards)
    in_sync = scan(ddb, "orders") == scan(ddb, "orders-replica")
    print(f"{replicator.applied} records applied from {len(shards)} shards ({closed} closed parents); "
          f"replica in sync: {in_sync}")
    assert in_sync


if __name__ == "__main__":
    main()
