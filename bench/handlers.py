"""In-process cost of the data-plane handlers, with throttling enforce and off.

    .venv/bin/python bench/handlers.py [--calls 5000] [--repeats 7] [--only GetItem,Query]

Builds the tables of `bench/workloads.py` (64 partitions, ~200-byte items, a 100-items-per-key
Query table) in one Context per throttling mode, then times GetItem, PutItem, UpdateItem
`SET #c = #c + :one`, Query(100), BatchWrite(25) and TransactWrite(4) (puts of new items, as
bench/workloads.py's), PutItem@300k (PutItem into a 256-partition table already grown to 300k
items, as the live bench's `bench_put` is after a run), PutItem+stream (PutItem on a table whose stream is
enabled, NEW_AND_OLD_IMAGES: the cost of a stream is its ratio to PutItem) and the PartiQL
SELECTs equivalent to GetItem and Query(100) (PQ ...) over random keys
(PutItem's are new in the first run and overwritten in later ones) two ways: through
`dynalocal.server.app.dispatch` (JSON decode, validation, handler, encoding; no HTTP) and by
calling the handler on an already decoded body. Each figure is the min over `--repeats` runs
of the mean CPU µs (process time, so other processes on a shared machine matter less) per
call of `--calls` calls; modes are interleaved in every repeat. The server's clock is
simulated (0.1 ms per reading) so no partition's cap is ever reached and every call is
answered 200, whatever the machine's speed.
"""
from __future__ import annotations

import argparse
import gc
import itertools
import random
import time
from typing import Callable

import orjson

from dynalocal.engine.caller import ANONYMOUS
from dynalocal.engine.dispatch import dispatch
from dynalocal.config import Settings
from dynalocal.engine.context import Context
from dynalocal.engine.operations import HANDLERS
from dynalocal.values.blob import dumps
from dynalocal.storage.mutation import Mutation
from dynalocal.values.attributes import item_size

PREFIX = "DynamoDB_20120810."
PARTITIONS = "64"
GET_ITEMS = 10_000
COUNTERS = 1_000
QUERY_KEYS = 1_000
PER_KEY = 100
PAYLOAD = "x" * 150
BIG_ITEMS = 300_000  # items in bench_put_big before PutItem@300k writes to it
BIG_PARTITIONS = "256"
MODES = ("enforce", "off")


def _call(ctx: Context, op: str, body: dict) -> None:
    status, out = dispatch(ctx, PREFIX + op, orjson.dumps(body))
    if status != 200:
        raise RuntimeError(out.decode())


def _create(ctx: Context, name: str, keys: list[tuple[str, str, str]], partitions: str = PARTITIONS,
            **extra) -> None:
    _call(ctx, "CreateTable", {
        "TableName": name, "BillingMode": "PAY_PER_REQUEST",
        "KeySchema": [{"AttributeName": n, "KeyType": k} for n, _, k in keys],
        "AttributeDefinitions": [{"AttributeName": n, "AttributeType": t} for n, t, _ in keys],
        "Tags": [{"Key": "dynalocal:partitions", "Value": partitions}],
        # warmed for the load, as bench/workloads.py does: in-process calls outrun a new table's 4000 WCU/s
        "WarmThroughput": {"ReadUnitsPerSecond": 1_000_000, "WriteUnitsPerSecond": 250_000}, **extra})


def _load(ctx: Context, name: str, items) -> None:
    table = ctx.db.tables[name].table
    for item in items:
        table.apply(Mutation(table.schema.encode_item(item), (dumps(item), item_size(item)), item))


def build(mode: str, big: bool = False) -> Context:
    """A Context with the benchmark tables filled, throttling in `mode`, a simulated clock
    (`big`: with bench_put_big, 300k items, too)."""
    ctx = Context(settings=Settings(throttling=mode), clock=itertools.count(1000.0, 1e-4).__next__)
    _create(ctx, "bench_get", [("pk", "S", "HASH")])
    _create(ctx, "bench_put", [("pk", "S", "HASH")])
    _create(ctx, "bench_put_stream", [("pk", "S", "HASH")],
            StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"})
    _create(ctx, "bench_upd", [("pk", "S", "HASH")])
    _create(ctx, "bench_query", [("pk", "S", "HASH"), ("sk", "N", "RANGE")])
    _load(ctx, "bench_get", ({"pk": {"S": f"item-{i:06d}"}, "payload": {"S": PAYLOAD}, "n": {"N": str(i)}}
                             for i in range(GET_ITEMS)))
    _load(ctx, "bench_upd", ({"pk": {"S": f"c-{i:04d}"}, "c": {"N": "0"}} for i in range(COUNTERS)))
    _load(ctx, "bench_query", ({"pk": {"S": f"p-{p:04d}"}, "sk": {"N": str(s)}, "payload": {"S": PAYLOAD}}
                               for p in range(QUERY_KEYS) for s in range(PER_KEY)))
    if big:
        _create(ctx, "bench_put_big", [("pk", "S", "HASH")], BIG_PARTITIONS)
        rng = random.Random(3)
        _load(ctx, "bench_put_big", ({"pk": {"S": f"p-{rng.randrange(10**9)}"}, "payload": {"S": PAYLOAD}}
                                     for _ in range(BIG_ITEMS)))
    return ctx


def bodies(op: str, count: int, rng: random.Random) -> list[dict]:
    """`count` request bodies of one workload over random keys."""
    if op == "GetItem":
        return [{"TableName": "bench_get", "Key": {"pk": {"S": f"item-{rng.randrange(GET_ITEMS):06d}"}}}
                for _ in range(count)]
    if op in ("PutItem", "PutItem+stream", "PutItem@300k"):
        table = {"PutItem": "bench_put", "PutItem+stream": "bench_put_stream"}.get(op, "bench_put_big")
        return [{"TableName": table, "Item": {"pk": {"S": f"p-{rng.randrange(10**9)}"},
                                                    "payload": {"S": PAYLOAD}}} for _ in range(count)]
    if op == "UpdateItem":
        return [{"TableName": "bench_upd", "Key": {"pk": {"S": f"c-{rng.randrange(COUNTERS):04d}"}},
                 "UpdateExpression": "SET #c = #c + :one", "ExpressionAttributeNames": {"#c": "c"},
                 "ExpressionAttributeValues": {":one": {"N": "1"}}} for _ in range(count)]
    if op == "BatchWrite(25)":
        return [{"RequestItems": {"bench_put": [
            {"PutRequest": {"Item": {"pk": {"S": f"b-{rng.randrange(10**9)}-{j}"}, "payload": {"S": PAYLOAD}}}}
            for j in range(1, 26)]}} for _ in range(count)]
    if op == "TransactWrite(4)":
        out = []
        for _ in range(count):
            base = rng.randrange(10**9)
            out.append({"TransactItems": [
                {"Put": {"TableName": "bench_put", "Item": {"pk": {"S": f"t-{base}-{j}"}, "payload": {"S": PAYLOAD}}}}
                for j in range(1, 5)]})
        return out
    if op == "PQ GetItem":
        return [{"Statement": 'SELECT * FROM "bench_get" WHERE pk = ?',
                 "Parameters": [{"S": f"item-{rng.randrange(GET_ITEMS):06d}"}]} for _ in range(count)]
    if op == "PQ Query(100)":
        return [{"Statement": 'SELECT * FROM "bench_query" WHERE pk = ?',
                 "Parameters": [{"S": f"p-{rng.randrange(QUERY_KEYS):04d}"}]} for _ in range(count)]
    return [{"TableName": "bench_query", "KeyConditionExpression": "pk = :p",
             "ExpressionAttributeValues": {":p": {"S": f"p-{rng.randrange(QUERY_KEYS):04d}"}}}
            for _ in range(count)]


# workload -> operation; "PutItem+stream" writes to a table with a NEW_AND_OLD_IMAGES stream
# (compare it with "PutItem" for the cost of an enabled stream); "PQ ..." are the PartiQL
# SELECTs equivalent to GetItem and Query(100) (compare them with those for PartiQL's cost).
OPERATIONS = {"GetItem": "GetItem", "PutItem": "PutItem", "PutItem@300k": "PutItem", "PutItem+stream": "PutItem",
              "UpdateItem": "UpdateItem", "BatchWrite(25)": "BatchWriteItem", "TransactWrite(4)": "TransactWriteItems",
              "Query(100)": "Query", "PQ GetItem": "ExecuteStatement", "PQ Query(100)": "ExecuteStatement"}


def time_dispatch(ctx: Context, op: str, raws: list[bytes]) -> float:
    """Mean µs per dispatch call over `raws`; every call must succeed."""
    target = PREFIX + op
    clock = time.process_time
    start = clock()
    for raw in raws:
        dispatch(ctx, target, raw)
    elapsed = clock() - start
    status, out = dispatch(ctx, target, raws[0])
    if status != 200:
        raise RuntimeError(out.decode())
    return elapsed / len(raws) * 1e6


def time_handler(ctx: Context, handler: Callable, decoded: list[dict]) -> float:
    """Mean µs per direct handler call over already decoded bodies."""
    clock = time.process_time
    start = clock()
    for body in decoded:
        handler(ctx, ANONYMOUS, body)
    return (clock() - start) / len(decoded) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=5000, help="calls per timed run (default 5000)")
    parser.add_argument("--repeats", type=int, default=7, help="timed runs per figure; the min is kept (default 7)")
    parser.add_argument("--only", default="", help="comma-separated workloads (default all)")
    args = parser.parse_args()
    only = set(args.only.split(",")) if args.only else set()
    chosen = [w for w in OPERATIONS if not only or w in only or OPERATIONS[w] in only]
    contexts = {mode: build(mode, "PutItem@300k" in chosen) for mode in MODES}
    rng = random.Random(7)
    print(f"{'workload':<14} {'dispatch enforce':>17} {'dispatch off':>13} {'ratio':>6} "
          f"{'handler enforce':>16} {'handler off':>12} {'ratio':>6}   (µs per call, min of {args.repeats})")
    for name in chosen:
        op = OPERATIONS[name]
        handler = HANDLERS[op]
        if name == "TransactWrite(4)":
            _call(contexts[MODES[0]], op, bodies(name, 1, rng)[0])  # import the lazily loaded handler
            handler = HANDLERS[op]
        raw = [orjson.dumps(b) for b in bodies(name, args.calls, rng)]
        best = {(kind, mode): float("inf") for kind in ("dispatch", "handler") for mode in MODES}
        for mode in MODES:  # warm-up: caches, compiled expressions, meters
            time_dispatch(contexts[mode], op, raw[:500])
        for _ in range(args.repeats):
            for mode in MODES:
                ctx = contexts[mode]
                decoded = [orjson.loads(r) for r in raw]
                gc.collect()
                best["dispatch", mode] = min(best["dispatch", mode], time_dispatch(ctx, op, raw))
                best["handler", mode] = min(best["handler", mode], time_handler(ctx, handler, decoded))
        d_on, d_off = best["dispatch", "enforce"], best["dispatch", "off"]
        h_on, h_off = best["handler", "enforce"], best["handler", "off"]
        print(f"{name:<14} {d_on:17.2f} {d_off:13.2f} {d_on / d_off:6.3f} {h_on:16.2f} {h_off:12.2f} "
              f"{h_on / h_off:6.3f}")


if __name__ == "__main__":
    main()
