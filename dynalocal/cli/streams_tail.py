"""`dynalocal streams tail TABLE [--from trim-horizon|latest]`: print a table's stream records as they arrive.

One JSON object per line, the record as GetRecords returns it (numbers of
ApproximateCreationDateTime in epoch seconds, binary values in base64). It follows every
shard of the table's latest stream, children only after their parents are read to the end,
so the records of one item come out in order; a stream enabled later is picked up too.
"""
from __future__ import annotations

import argparse
import base64
import datetime
import json
import sys
import time
from typing import Any, TextIO


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="dynalocal streams tail", description=__doc__.split("\n\n")[0])
    parser.add_argument("table", help="the table whose stream to follow")
    parser.add_argument("--from", dest="start", default="latest", choices=["trim-horizon", "latest"],
                        help="start at the oldest retained record (trim-horizon) or at new ones (latest, default)")
    parser.add_argument("--endpoint", default="http://127.0.0.1:8000", help="the server (default http://127.0.0.1:8000)")
    parser.add_argument("--region", default="us-east-1")
    parser.add_argument("--poll", type=float, default=0.2, help="seconds between polls of an idle shard")
    return parser.parse_args(argv)


def _plain(value: Any) -> Any:
    if isinstance(value, datetime.datetime):
        return value.timestamp()
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(value).decode()
    raise TypeError(type(value).__name__)


class Follower:
    """The shards of one stream: which are read to the end, and an iterator for each open reader."""

    def __init__(self, streams: Any, arn: str, start: str) -> None:  # streams: a botocore client (untyped)
        self.streams, self.arn = streams, arn
        self.done: set[str] = set()
        self.iterators: dict[str, str] = {}
        self.first = True
        self.start = start

    def refresh(self) -> None:
        """Find shards whose parents are done (or unknown) and start reading them."""
        shards, start_id = [], None
        while True:
            page = self.streams.describe_stream(StreamArn=self.arn, **(
                {"ExclusiveStartShardId": start_id} if start_id else {}))["StreamDescription"]
            shards += page["Shards"]
            start_id = page.get("LastEvaluatedShardId")
            if not start_id:
                break
        known = {s["ShardId"] for s in shards}
        for shard in shards:
            shard_id, parent = shard["ShardId"], shard.get("ParentShardId")
            if shard_id in self.done or shard_id in self.iterators or (parent in known and parent not in self.done):
                continue
            closed = "EndingSequenceNumber" in shard["SequenceNumberRange"]
            if self.first and self.start == "latest":
                if closed:
                    self.done.add(shard_id)
                    continue
                kind = "LATEST"
            else:
                kind = "TRIM_HORIZON"
            self.iterators[shard_id] = self.streams.get_shard_iterator(
                StreamArn=self.arn, ShardId=shard_id, ShardIteratorType=kind)["ShardIterator"]
        self.first = False

    def poll(self, out: TextIO) -> int:
        """Read each open iterator once; print the records; return how many."""
        count = 0
        for shard_id, iterator in list(self.iterators.items()):
            page = self.streams.get_records(ShardIterator=iterator)
            for record in page["Records"]:
                out.write(json.dumps(record, default=_plain) + "\n")
                count += 1
            following = page.get("NextShardIterator")
            if following is None:
                del self.iterators[shard_id]
                self.done.add(shard_id)
            else:
                self.iterators[shard_id] = following
        out.flush()
        return count


def tail(args: argparse.Namespace, out: TextIO = sys.stdout) -> None:
    import botocore.session

    session = botocore.session.get_session()
    session.set_credentials("local", "local")
    ddb = session.create_client("dynamodb", region_name=args.region, endpoint_url=args.endpoint)
    streams = session.create_client("dynamodbstreams", region_name=args.region, endpoint_url=args.endpoint)
    follower: Follower | None = None
    last_refresh = 0.0
    while True:
        now = time.monotonic()
        if follower is None or now - last_refresh > 1.0:
            arn = ddb.describe_table(TableName=args.table)["Table"].get("LatestStreamArn")
            if arn is not None and (follower is None or follower.arn != arn):
                follower = Follower(streams, arn, args.start if follower is None else "trim-horizon")
            if follower is not None:
                follower.refresh()
            last_refresh = now
        if follower is None or not follower.poll(out):
            time.sleep(args.poll)


def main(argv: list[str]) -> int:
    """Entry point of `dynalocal streams ...`; returns the exit status."""
    if not argv or argv[0] != "tail":
        print("usage: dynalocal streams tail TABLE [--from trim-horizon|latest] [--endpoint URL]", file=sys.stderr)
        return 2
    args = parse_args(argv[1:])
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        tail(args)
    except KeyboardInterrupt:
        return 0
    except (ClientError, BotoCoreError) as err:
        print(f"dynalocal streams tail: {err}", file=sys.stderr)
        return 1
    return 0
