"""Query latency against table size, and memory per stored item.

Builds tables of 1k, 100k and 1M items (100 items per partition key, written in random
order), then times Queries that return the 100 items of one random partition key. Requests
go through the server's dispatch (validation + handler + serialisation, no HTTP), so the
figure is the server's own cost. Prints median/p99 per size, the 1M/1k median ratio (goal
<= 1.1) and RSS growth per stored item.

    .venv/bin/python bench/query_latency.py [--sizes 1000,100000,1000000] [--queries 3000]
"""
from __future__ import annotations

import argparse
import gc
import os
import random
import statistics
import time

import orjson

from dynalocal.engine.dispatch import dispatch
from dynalocal.config import Settings
from dynalocal.engine.context import Context
from dynalocal.values.blob import dumps
from dynalocal.storage.mutation import Mutation
from dynalocal.values.attributes import item_size

PREFIX = "DynamoDB_20120810."
PER_KEY = 100


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def call(ctx: Context, op: str, body: dict) -> bytes:
    status, out = dispatch(ctx, PREFIX + op, orjson.dumps(body))
    if status != 200:
        raise RuntimeError(out.decode())
    return out


def build(ctx: Context, name: str, size: int, seed: int, shuffle: bool = True, via_put: bool = False) -> None:
    """Create a table and load `size` items through Table.apply (the single write path) or PutItem."""
    call(ctx, "CreateTable", {
        "TableName": name, "BillingMode": "PAY_PER_REQUEST",
        "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"},
                                 {"AttributeName": "sk", "AttributeType": "N"}]})
    table = ctx.db.tables[name].table
    order = list(range(size))
    if shuffle:  # writes of many keys interleaved in time, as real traffic arrives
        random.Random(seed).shuffle(order)
    put = PREFIX + "PutItem"
    for i in order:
        item = {"pk": {"S": f"user#{i // PER_KEY:07d}"}, "sk": {"N": str(i % PER_KEY)},
                "v": {"S": f"value-{i:09d}"}}
        if via_put:
            dispatch(ctx, put, orjson.dumps({"TableName": name, "Item": item}))
        else:
            table.apply(Mutation(table.schema.encode_item(item), (dumps(item), item_size(item)), item))


def measure(ctx: Context, name: str, size: int, queries: int, seed: int) -> list[float]:
    """Latencies (µs) of Queries returning one whole partition key (100 items)."""
    rng = random.Random(seed)
    keys = size // PER_KEY
    bodies = [orjson.dumps({"TableName": name, "KeyConditionExpression": "pk = :p",
                            "ExpressionAttributeValues": {":p": {"S": f"user#{rng.randrange(keys):07d}"}}})
              for _ in range(queries)]
    target = PREFIX + "Query"
    for raw in bodies[:200]:  # warm-up
        dispatch(ctx, target, raw)
    out = []
    clock = time.perf_counter_ns
    for raw in bodies:
        start = clock()
        status, body = dispatch(ctx, target, raw)
        out.append((clock() - start) / 1000)
        assert status == 200 and body.count(b'"pk"') == PER_KEY, body[:200]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,100000,1000000")
    parser.add_argument("--queries", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=3, help="interleaved measuring rounds per size")
    parser.add_argument("--load", choices=["apply", "put"], default="apply",
                        help="load through Table.apply (default, fast) or through PutItem requests")
    parser.add_argument("--order", choices=["random", "sequential"], default="random",
                        help="write order: random (default) or each partition key's items together")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    ctx = Context(settings=Settings(throttling="off"))
    per_item = {}
    for size in sizes:
        gc.collect()
        before = rss_bytes()
        build(ctx, f"t{size}", size, seed=size, shuffle=args.order == "random", via_put=args.load == "put")
        gc.collect()
        per_item[size] = (rss_bytes() - before) / size
    samples: dict[int, list[float]] = {size: [] for size in sizes}
    for r in range(args.rounds):  # interleave sizes so drift affects all alike
        for size in sizes:
            samples[size] += measure(ctx, f"t{size}", size, args.queries, seed=r)
    medians = {}
    print(f"write order: {args.order}, loaded via {args.load}")
    print(f"{'items':>10} {'median µs':>10} {'p99 µs':>8} {'RSS B/item':>11}")
    for size in sizes:
        lat = sorted(samples[size])
        medians[size] = statistics.median(lat)
        p99 = lat[int(len(lat) * 0.99)]
        print(f"{size:>10} {medians[size]:>10.1f} {p99:>8.1f} {per_item[size]:>11.0f}")
    lo, hi = sizes[0], sizes[-1]
    print(f"latency ratio {hi}/{lo}: {medians[hi] / medians[lo]:.3f} (goal <= 1.1)")
    print(f"memory per stored item ({hi} items): {per_item[hi]:.0f} bytes RSS")


if __name__ == "__main__":
    main()
