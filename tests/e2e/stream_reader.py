"""Test helpers: a boto3 `dynamodbstreams` client and a reader that follows every shard of a stream."""
from __future__ import annotations

import boto3


def streams_client(url: str):
    session = boto3.session.Session(aws_access_key_id="test", aws_secret_access_key="test", region_name="us-east-1")
    return session.client("dynamodbstreams", endpoint_url=url)


def all_shards(client, arn: str) -> list[dict]:
    """Every shard of a stream, following LastEvaluatedShardId."""
    shards, start = [], None
    while True:
        page = client.describe_stream(StreamArn=arn, **({"ExclusiveStartShardId": start} if start else {}))
        shards += page["StreamDescription"]["Shards"]
        start = page["StreamDescription"].get("LastEvaluatedShardId")
        if not start:
            return shards


def read_shard(client, arn: str, shard_id: str, limit: int | None = None) -> tuple[list[dict], bool]:
    """Every record of one shard from TRIM_HORIZON: (records, whether the shard reported its end)."""
    iterator = client.get_shard_iterator(StreamArn=arn, ShardId=shard_id,
                                         ShardIteratorType="TRIM_HORIZON")["ShardIterator"]
    records: list[dict] = []
    empty = 0
    while iterator and empty < 2:
        page = client.get_records(ShardIterator=iterator, **({"Limit": limit} if limit else {}))
        records += page["Records"]
        empty = empty + 1 if not page["Records"] else 0
        iterator = page.get("NextShardIterator")
    return records, iterator is None


def read_stream(client, arn: str, limit: int | None = None) -> list[dict]:
    """All records of a stream, parents before children (what a lineage-aware consumer sees)."""
    shards = all_shards(client, arn)
    ids = {s["ShardId"] for s in shards}
    done: set[str] = set()
    out: list[dict] = []
    while len(done) < len(shards):
        for shard in shards:
            parent = shard.get("ParentShardId")
            if shard["ShardId"] in done or (parent in ids and parent not in done):
                continue
            out += read_shard(client, arn, shard["ShardId"], limit)[0]
            done.add(shard["ShardId"])
    return out


def replay(records: list[dict]) -> dict:
    """Apply records over an empty dict keyed by the record's Keys: the table they describe."""
    state: dict = {}
    for record in records:
        data = record["dynamodb"]
        key = tuple(sorted((k, tuple(v.items())) for k, v in data["Keys"].items()))
        if record["eventName"] == "REMOVE":
            state.pop(key, None)
        else:
            state[key] = data["NewImage"]
    return state
